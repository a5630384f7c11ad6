"""MedVidBench: an evaluator and self-hostable leaderboard for medical video-language models."""

__version__ = "0.1.0"
