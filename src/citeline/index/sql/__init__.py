"""What the SQL stores share: the dialect, row mappers, filters, writes and the checker."""
