"""What every command shares: its argument types, its console lines and its error log."""
