"""The benchmark's tasks: one module per task, registered in :mod:`medvidbench.tasks.registry`."""

from medvidbench.tasks.registry import TASKS, TaskInfo, task_for_qa_type

__all__ = ["TASKS", "TaskInfo", "task_for_qa_type"]
