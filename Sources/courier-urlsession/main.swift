import CourierCLI

// `courier` with URLSession linked in: `--transport urlsession` and background hand-off.
// `courier` runs this executable itself when a command asks for either.
await CourierMain.run(urlSession: URLSessionCLI())
