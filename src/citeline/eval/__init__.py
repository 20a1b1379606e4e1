"""Evaluation: retrieval and answer metrics, BEIR dataset loading."""
