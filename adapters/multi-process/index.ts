// multiProcess opens for Node: installs the backend LsmLevel uses when another
// process may own the database (backend.ts, process-election.ts). The Node
// entry (index.ts) imports this; browser bundles do not.
import { installMultiProcess } from '../lsm-level'
import { MultiProcessBackend } from './backend'

installMultiProcess((options) => new MultiProcessBackend(options))
