"""One discrete-event loop over tasks on streams, with dependencies."""

from trainsim.engine.loop import Task, Timeline, run

__all__ = ["Task", "Timeline", "run"]
