"""Users' own datasets by path (data.train_files, SkyRL's data.train_data) and their skyrl-gym environments."""
