"""Reports: figures, advice and a self-contained HTML file from stored runs.

Importing this package loads no plotting library: matplotlib is imported when a figure is drawn.
"""
from __future__ import annotations

from accelbench.report.advice import Finding, findings

__all__ = ["Finding", "findings"]
