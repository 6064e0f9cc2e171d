"""Placeholder until the attention plugin lands; registers nothing."""


def register(registry) -> None:
    return None
