"""Vocabulary shared by every floor: messages, events, errors, the Tool contract, permission types, abort and context."""
