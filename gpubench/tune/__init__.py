"""`gpubench tune`'s logic, pure: config spaces, the racing schedule, ties and the pinned file."""
