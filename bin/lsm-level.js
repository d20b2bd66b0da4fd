#!/usr/bin/env node
'use strict'
require('../dist/lib/cli.js').main(process.argv.slice(2))
