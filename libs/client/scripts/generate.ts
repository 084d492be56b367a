// npm run generate:client: (re)writes libs/client/src/openapi.ts from the gateway's OpenAPI document.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GENERATED_PATH, renderOpenApiTypes } from './openapi-types.ts';

const text = await renderOpenApiTypes();
await writeFile(GENERATED_PATH, text);
process.stdout.write(`wrote ${path.relative(process.cwd(), GENERATED_PATH)} (${text.length} characters)\n`);
