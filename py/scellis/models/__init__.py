"""Pretrained models brought in from their files: tensor files read, and programs built around their weights."""
