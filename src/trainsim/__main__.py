"""``python -m trainsim``: the same command line as the ``trainsim`` console script."""

from trainsim.cli import main

if __name__ == "__main__":
    main(prog_name="trainsim")
