"""Where a run's jobs are made: in this process (the local engine) or spread over Ray actors."""
