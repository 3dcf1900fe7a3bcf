"""A run: every item of a prompt set through one or more router configurations, with its
settings, its jobs and its summary."""
