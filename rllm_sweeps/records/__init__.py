"""What a sweep and its jobs leave on disk, and who may write it (attempts, fencing)."""
