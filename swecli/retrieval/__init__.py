"""Just-in-time retrieval: before the first model call, attach the files a task points at."""
