-- One row per background job (jobLuid): Tableau logs a background_job event at each state
-- (Pending, InProgress, then Success / Failed / Cancelled); this folds them into one timeline.
-- bridge_job (live feed) is the same for a job Tableau Bridge runs on the customer's network: its
-- jobId is kept apart from background_job's as bridge_job_id.
{{ background_job_states() }}
