"""Memory logic written once above the storage protocol: reconciler, recall, decay, audit."""
