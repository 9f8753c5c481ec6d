"""The pipeline-file language: keys, kinds, parsing and validation."""
