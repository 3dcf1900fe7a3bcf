"""How an answer is scored: its checks against `expect` (grading) and whether it is
grounded in the evidence it was given (grounding). Pure: no model call."""
