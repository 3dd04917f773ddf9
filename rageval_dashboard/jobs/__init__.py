"""Work that outlasts a page's run: background scorings and judge runs, imports of uploaded
files, and waiting for a store another process holds."""
