"""The long fuzz run: tests/fuzz's targets at 100,000 cases and more, over many processes."""
