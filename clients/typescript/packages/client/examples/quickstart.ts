// The main README's Quickstart, continued from TypeScript: the same organisation, agent, people and DM.
// Run it with ARCHIVIST_URL and ARCHIVIST_TOKEN exported, as the Quickstart exported them:
//   npm run build && node packages/client/dist/examples/quickstart.js   (in clients/typescript)
import { ArchivistClient, InvalidError, type Place } from "@archivist/client";

const dm: Place = { channel: "D-mona", kind: "dm", people: ["mona"] };
const archivist = new ArchivistClient({ place: dm }); // ARCHIVIST_URL and ARCHIVIST_TOKEN from the environment

const fact = await archivist.remember({ body: "Her birthday is on 12 March", tier: "profile" });
console.log(fact.scope, fact.scope_label); // person mona: a DM's fact is that person's

const rendered = await archivist.render({ turn_id: `readme-ts-${Date.now()}`, question: "When is her birthday?" });
console.log(rendered.text);

const names: string[] = [];
for await (const person of archivist.people()) names.push(person.display_name);
console.log(names); // [ 'Max', 'Mona' ] (newest first)

try {
  await archivist.recall({ question: "names", limit: 1000 });
} catch (error) {
  if (!(error instanceof InvalidError)) throw error;
  console.log(error.fields.limit); // [ 'limit is at most 40.' ]
}
