#!/usr/bin/env node
'use strict'
require('../dist/node/cli.js').main(process.argv.slice(2))
