"""``python -m commsim``: the same command line as the ``commsim`` script."""
from commsim.cli import main

if __name__ == "__main__":
    main()
