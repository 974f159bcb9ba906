"""Users' own datasets by path (data.train_files, SkyRL's training data files) and their skyrl-gym environments."""
