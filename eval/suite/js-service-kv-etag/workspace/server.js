import { createApp } from "./src/app.js";

const server = createApp();
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on ${server.address().port}`);
});
