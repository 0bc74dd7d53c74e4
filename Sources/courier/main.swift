import CourierCLI

// The command line without FoundationNetworking: a command that asks for URLSession runs as
// `courier-urlsession` (installed next to this executable), with the same arguments.
await CourierMain.run(urlSession: nil)
