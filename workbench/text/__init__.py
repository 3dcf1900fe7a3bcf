"""Privacy and text (SPEC 6): the reversible masker, and what cleans and shapes model text."""
