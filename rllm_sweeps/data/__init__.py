"""Users' own datasets by path (data.train_files, SkyRL's training data files) and their skyrl-gym environments;
the task and workflow a job runs (task.py: a dataset by path makes the workflow SkyRL's generator loop)."""
