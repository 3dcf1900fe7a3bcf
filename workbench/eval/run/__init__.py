"""A run: every item of a prompt set through one or more router configurations.

prompt_set.py  `run_prompt_set` (and `regrade`): the run opened, its jobs listed, made, closed
options.py     `RunConfig`, every setting of a run (the run's row records it); `RunHooks`
jobs.py        `Job`, `JobSettings`, `run_jobs`: one output made, graded and logged
summary.py     `RunSummary` and the lines the terminal shows for it
"""
