"""Library errors name parameters (``n``, ``model``); the command line shows the flag the user typed.

Each command's mapping from parameter name to flag is read off its click parameters: an option is known
by its Python name and by its flag without dashes (``--model`` / ``model_spec`` -> ``--model``,
``--n-range`` -> ``--n-range``), an argument by its name (``reduction`` -> ``REDUCTION``).  A command may
add names with a ``flag_aliases`` dict.  Errors raised by the command line itself may name the flag
(``param="--n"``); they are shown as they are.
"""
from __future__ import annotations

import click

#: how a message that opens with the parameter's name goes on ("n must be ...", "n = 40: ...")
_SUBJECT_TAILS = (" must ", " =", ": ", " is ", " needs ", " does ", " has ")


def flags_of(command: click.Command | None) -> dict[str, str]:
    """Parameter name -> the flag (or argument name) that sets it, for one command."""
    flags: dict[str, str] = {}
    if command is None:
        return flags
    for param in command.params:
        if isinstance(param, click.Option):
            shown = next((o for o in param.opts if o.startswith("--")), param.opts[0])
            names = [param.name] + [o.lstrip("-").replace("-", "_") for o in param.opts] + \
                    [o.lstrip("-") for o in param.opts]
        else:
            shown, names = param.human_readable_name, [param.name]
        for name in names:
            if name:
                flags.setdefault(name, shown)
    flags.update(getattr(command, "flag_aliases", {}))
    return flags


def flag_message(message: str, param: str | None, flags: dict[str, str]) -> str:
    """The one-line error as the user should read it: naming the flag they typed.

    A message opening with the parameter's name gets the flag in its place (``n must be at least 1`` ->
    ``--n must be at least 1``); another is prefixed with it (``--protocol: unknown cc-protocol ...``).
    A message that already names the flag, or a parameter this command has no flag for, is left as it is.
    """
    if not param:
        return message
    flag = flags.get(param) or flags.get(param.replace("-", "_"))
    if flag is None and (param.startswith("-") or param.isupper()):
        flag = param                                   # an error that names the flag itself
    if flag is None or flag in message:
        return message
    if message.startswith(param) and message[len(param):].startswith(_SUBJECT_TAILS):
        return flag + message[len(param):]
    return f"{flag}: {message}"
