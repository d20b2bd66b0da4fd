#!/usr/bin/env node
'use strict'
require('../dist/cli/main.js').main(process.argv.slice(2))
