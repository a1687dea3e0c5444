// The dashboard's entry: mounts the app into the page the edge serves at /dashboard.
import { render } from "preact";
import { App } from "./app.tsx";
import "./app.css";

render(<App />, document.getElementById("app")!);
