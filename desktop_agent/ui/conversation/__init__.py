"""The conversation view: messages, tool cards, markdown and code rendering."""
