"""``python -m trainsim.profile ...``: the profile command without the trainsim CLI group."""

from trainsim.profile.cli import profile

if __name__ == "__main__":  # pragma: no cover
    profile()
