// Stylesheets are bundled by esbuild; importing one only adds it to the page's app.css.
declare module "*.css";
