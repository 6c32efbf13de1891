"""What every stage shares: errors and exit codes, terminal output, input limits, files, exact figures."""
