"""Examples: model factories (python:examples.factories:FUNCTION) and a training script."""
