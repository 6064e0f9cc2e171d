"""Placeholder until the recurrent plugin lands; registers nothing."""


def register(registry) -> None:
    return None
