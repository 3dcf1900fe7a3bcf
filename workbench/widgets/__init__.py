"""Jupyter widgets: they render and forward clicks; the models and the stores decide.

- `ApprovalQueue` over `ApprovalModel`: pending actions, amend, approve / reject, history.
- `CompareOutputs` over `CompareModel`: outputs side by side with the differences
  highlighted, filtered by tag / model / grade, one page at a time.

The models import no ipywidgets: they work in scripts and tests without the `notebooks`
extra.
"""

from workbench.widgets.approvals import ApprovalModel, ApprovalQueue, schedule
from workbench.widgets.compare import (
    GRADES,
    CompareModel,
    CompareOutputs,
    Row,
    diff_html,
    outputs_with_tags,
)

__all__ = [
    "GRADES",
    "ApprovalModel",
    "ApprovalQueue",
    "CompareModel",
    "CompareOutputs",
    "Row",
    "diff_html",
    "outputs_with_tags",
    "schedule",
]
