"""Tools an agent may call: pending actions (an agent proposes, a human decides)."""
