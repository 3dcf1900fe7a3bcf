"""Prompt sets: items read and checked whole, the tool specs they name, and the masker each
item is given."""
