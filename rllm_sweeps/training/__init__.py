"""The single-turn RL loop written against SkyRL's ``AbstractBackend``."""
