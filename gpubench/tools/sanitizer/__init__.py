"""compute-sanitizer: command lines, its XML/text log parser and the findings view."""
