// multiProcess opens for Node: installs the link LsmLevel uses when another
// process may own the database (client.ts, owner-link.ts). The Node entry
// (index.ts) imports this; browser bundles do not.
import { installMultiProcess } from '../lsm-level'
import { MultiProcessClient } from './client'

installMultiProcess((options) => new MultiProcessClient(options))
