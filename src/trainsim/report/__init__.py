"""Format typed results: terminal tables, JSON, Chrome/Perfetto traces."""

from trainsim.report.table import render_result, render_validation
from trainsim.report.trace import chrome_trace, write_chrome_trace

__all__ = ["chrome_trace", "render_result", "render_validation", "write_chrome_trace"]
