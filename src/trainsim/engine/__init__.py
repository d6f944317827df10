"""One discrete-event loop over tasks on streams, with dependencies."""

from trainsim.engine.loop import Task, Timeline, gc_paused, run

__all__ = ["Task", "Timeline", "gc_paused", "run"]
