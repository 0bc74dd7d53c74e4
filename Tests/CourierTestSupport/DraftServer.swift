// The draft server moved to its own target (the CLI serves it too); tests reach it through this module.
@_exported import CourierDraftServer
