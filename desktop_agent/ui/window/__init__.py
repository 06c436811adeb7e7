"""The main window: layout, toolbar, sessions sidebar, banners, and the controller that drives a SessionHandle."""
