"""Running a pipeline's tasks: the executor, the task functions, checkpoints, scoring."""
