"""Population-based training's shared part, below both the sweeper and the job.

Modules: decision (who exploits whom, with which settings: pure), board (each trial's latest
score, as files the trials' jobs share), membership (pbt.json: what a trial's job needs to take
part), mutable (the sweep keys a schedule may change mid-run), member (a trial's side of the
search inside its running job). The sweeper's side (the `pbt:` block, the population's jobs) is
sweep/pbt_settings.py and sweep/pbt_source.py; nothing here reads the sweep DSL.
"""
