"""Date formats (FORMAT_MODULE_PATH): one way of writing a moment everywhere the back office shows one."""
